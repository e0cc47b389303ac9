/*
 * admin_cli.h: `shardstore admin ...`, the command-line client of the
 * admin API (admin_cli.c). main() dispatches to it before any server
 * startup.
 */
#ifndef SHARD_SERVER_ADMIN_CLI_H
#define SHARD_SERVER_ADMIN_CLI_H

/* Runs the admin subcommand in argv[0..argc) (argv[0] is "admin").
 * Returns the process exit code (0, or 1 after an error on stderr). */
int admin_cli_main(int argc, char **argv);

#endif
