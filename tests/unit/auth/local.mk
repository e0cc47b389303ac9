# unit tests of auth/
