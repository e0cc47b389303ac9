/*
 * admin_cli.h: `shardstore admin ...`, which runs the admin client `shard
 * admin ...` (client/cli_admin.c). main() dispatches to it before any
 * server startup.
 */
#ifndef SHARD_SERVER_ADMIN_CLI_H
#define SHARD_SERVER_ADMIN_CLI_H

/* Execs `shard` with argv[0..argc) (argv[0] is "admin") after a program
 * name of "shardstore". Returns only on failure: 1, after a message on
 * stderr. */
int admin_cli_main(int argc, char **argv);

#endif
