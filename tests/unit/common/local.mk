# unit tests of common/
