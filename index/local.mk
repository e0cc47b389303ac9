# index/ module
