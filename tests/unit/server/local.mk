# unit tests of server/
