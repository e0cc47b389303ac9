# unit tests of index/
