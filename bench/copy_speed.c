/*
 * copy_speed.c: the copy ceilings of the RDMA-over-shm path on this host.
 *
 * libfabric's shm provider moves an RMA write of more than 4 KiB with one
 * process_vm_readv (cross-memory attach) done by the target process, i.e. the
 * client. This measures that call alone, outside libfabric and shardstore: a
 * child process reads N MiB (default 1024) of its parent's pre-faulted memory
 * into its own pre-faulted buffer in 8 MiB calls, with 1 and then 2 threads,
 * and a plain memcpy of the same bytes; it prints MiB/s and the copying
 * process's CPU-seconds per GiB, best of 3. Usage: copy_speed [MiB]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALL_LEN ((size_t)8 << 20)

struct job {
    pid_t peer;
    const char *src; /* in the peer */
    char *dst;
    size_t len;
    int rc;
};

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *
job_main(void *arg)
{
    struct job *j = arg;
    for (size_t o = 0; o < j->len && j->rc == 0; o += CALL_LEN) {
        size_t n = j->len - o < CALL_LEN ? j->len - o : CALL_LEN;
        struct iovec local = {j->dst + o, n};
        struct iovec remote = {(void *)(j->src + o), n};
        if (process_vm_readv(j->peer, &local, 1, &remote, 1, 0) != (ssize_t)n)
            j->rc = -1;
    }
    return NULL;
}

static char *
faulted(size_t len, int byte)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, byte, len);
    return p;
}

static void
report(const char *what, size_t len, double best_s, double best_cpu)
{
    double gib = (double)len / (1 << 30);
    printf("COPY what=%s MiBps=%.0f cpu_s_per_gib=%.2f\n", what, (double)len / 1048576.0 / best_s,
           best_cpu / gib);
    fflush(stdout); /* the child ends with _exit */
}

/* The child: copies from the parent 3 times per thread count, then memcpy. */
static int
child_main(pid_t parent, const char *src, size_t len)
{
    char *dst = faulted(len, 1);
    for (int threads = 1; threads <= 2; threads++) {
        double best = 1e9, best_cpu = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            struct job jobs[2];
            pthread_t th[2];
            double c0 = cpu_s(), t0 = now_s();
            for (int i = 0; i < threads; i++) {
                size_t per = len / (size_t)threads;
                jobs[i] =
                    (struct job){parent, src + (size_t)i * per, dst + (size_t)i * per, per, 0};
                pthread_create(&th[i], NULL, job_main, &jobs[i]);
            }
            for (int i = 0; i < threads; i++) {
                pthread_join(th[i], NULL);
                if (jobs[i].rc != 0) {
                    perror("process_vm_readv");
                    return 1;
                }
            }
            double t = now_s() - t0, c = cpu_s() - c0;
            best = t < best ? t : best;
            best_cpu = c < best_cpu ? c : best_cpu;
        }
        report(threads == 1 ? "process_vm_readv_1_thread" : "process_vm_readv_2_threads", len, best,
               best_cpu);
    }
    char *copy = faulted(len, 2);
    double best = 1e9, best_cpu = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double c0 = cpu_s(), t0 = now_s();
        memcpy(copy, dst, len);
        double t = now_s() - t0, c = cpu_s() - c0;
        best = t < best ? t : best;
        best_cpu = c < best_cpu ? c : best_cpu;
    }
    report("memcpy_1_thread", len, best, best_cpu);
    return dst[len - 1] == 7 && copy[0] == 7 ? 0 : 1;
}

int
main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
    if (mib == 0 || mib > 65536) {
        fprintf(stderr, "usage: copy_speed [MiB]\n");
        return 2;
    }
    size_t len = mib << 20;
    char *src = faulted(len, 7);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0)
        _exit(child_main(parent, src, len));
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "copy_speed: the copying child failed\n");
        return 1;
    }
    return 0;
}
