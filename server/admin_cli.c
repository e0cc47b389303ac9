/*
 * admin_cli.c: `shardstore admin ...` runs `shard admin ...`. The admin
 * client lives in client/cli_admin.c on libshard, the one owner of libcurl
 * in the tree (the server links libshard only for its remote tier,
 * tier_remote.c): this file only hands its command line over. The shard
 * tool is taken from the directory of the running shardstore (make install
 * puts both in bindir; the build puts both in the build directory), else
 * from PATH. argv[0] of the tool is
 * "shardstore" so that its messages say "shardstore admin".
 */
#include "config.h"

#include "common/common.h"
#include "server/admin_cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
admin_cli_main(int argc, char **argv)
{
    static char name[] = "shardstore";
    char self[PATH_MAX], tool[PATH_MAX + 8];
    char **args = xcalloc((size_t)argc + 2, sizeof(*args));
    args[0] = name;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    tool[0] = '\0';
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            snprintf(tool, sizeof(tool), "%.*s/shard", (int)(slash - self), self);
            if (access(tool, X_OK) == 0)
                execv(tool, args);
        }
    }
    execvp("shard", args);
    fprintf(stderr, "shardstore admin: cannot run the shard tool (%s%sPATH): %s\n", tool,
            tool[0] ? " or " : "", strerror(errno));
    free(args);
    return 1;
}
