# unit tests of storage/
