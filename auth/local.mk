# auth/ module
