# storage/ module
