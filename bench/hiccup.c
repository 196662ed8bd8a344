// hiccup: how often a thread that never blocks is kept off its CPU, and for how long.
//
// Each thread spins for the given seconds reading CLOCK_MONOTONIC (vDSO, no system call) and
// counts the gaps between consecutive reads above 5/10/20/50/100/200 us: time the thread did
// not run, taken by the kernel, interrupts or the hypervisor. The callback-latency probes'
// dispatcher spins the same way, so these gaps bound the tail any dispatcher can reach on the
// host (docs/design.md, "Dispatch latency").
//
//   hiccup [SECONDS [THREADS]]
//
// One thread (the default) prints one JSON object. With THREADS >= 2, each thread is pinned to
// its own CPU, spread over the online CPUs, and the output adds each thread's figures
// ("threads") and how many of the first thread's gaps over 20 us overlap a gap over 20 us of
// the second ("overlap_20us"): a share near 100% means the CPUs stall together (the whole
// machine paused), near 0% that each CPU is taken away on its own.
//
// Build: gcc -O2 -static -pthread -o hiccup hiccup.c
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { LIMITS = 6, MAX_THREADS = 64, MAX_LOGGED = 1 << 16 };
static const long long limits[LIMITS] = {5000, 10000, 20000, 50000, 100000, 200000};

typedef struct {
    int cpu; // -1: not pinned
    double seconds;
    long long counts[LIMITS], worst, total_gap;
    long long logged, *from, *to; // the gaps over 20 us (their first MAX_LOGGED)
} spinner;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void* spin(void* arg) {
    spinner* s = arg;
    if (s->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    long long start = now_ns(), end = start + (long long)(s->seconds * 1e9), prev = start;
    for (long long t = prev; t < end; prev = t) {
        t = now_ns();
        long long gap = t - prev;
        if (gap > s->worst) s->worst = gap;
        for (int i = 0; i < LIMITS; i++) {
            if (gap > limits[i]) s->counts[i]++;
        }
        if (gap > 5000) s->total_gap += gap;
        if (gap > 20000 && s->from != NULL && s->logged < MAX_LOGGED) {
            s->from[s->logged] = prev;
            s->to[s->logged++] = t;
        }
    }
    return NULL;
}

static void print(const spinner* s) {
    printf("{\"cpu\": %d, \"seconds\": %.1f, \"gaps_over_us\": {\"5\": %lld, \"10\": %lld, \"20\": %lld, \"50\": %lld, "
           "\"100\": %lld, \"200\": %lld}, \"max_us\": %.1f, \"lost_fraction\": %.2e}",
           s->cpu, s->seconds, s->counts[0], s->counts[1], s->counts[2], s->counts[3], s->counts[4], s->counts[5],
           s->worst / 1e3, s->total_gap / (s->seconds * 1e9));
}

int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    int n = argc > 2 ? atoi(argv[2]) : 1;
    if (seconds <= 0 || seconds > 3600 || n < 1 || n > MAX_THREADS) {
        fprintf(stderr, "usage: hiccup [SECONDS (0..3600], default 3) [THREADS (1..%d), default 1]]\n", MAX_THREADS);
        return 2;
    }
    static spinner s[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < n; i++) {
        s[i].seconds = seconds;
        s[i].cpu = n > 1 ? (int)((1 + i * (cpus / n)) % cpus) : -1; // CPU 0 takes most interrupts
        if (n > 1 && i < 2) {
            s[i].from = malloc(MAX_LOGGED * sizeof(long long));
            s[i].to = malloc(MAX_LOGGED * sizeof(long long));
            if (s[i].from == NULL || s[i].to == NULL) return 1;
        }
    }
    if (n == 1) {
        spin(&s[0]);
        print(&s[0]);
        printf("\n");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, spin, &s[i]) != 0) return 1;
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    long long overlap = 0;
    for (long long k = 0, j = 0; k < s[0].logged; k++) { // both lists are in time order
        while (j < s[1].logged && s[1].to[j] < s[0].from[k]) j++;
        if (j < s[1].logged && s[1].from[j] <= s[0].to[k]) overlap++;
    }
    printf("{\"seconds\": %.1f, \"threads\": [", seconds);
    for (int i = 0; i < n; i++) {
        if (i) printf(", ");
        print(&s[i]);
    }
    printf("], \"overlap_20us\": {\"first\": %lld, \"overlapping_second\": %lld}}\n", s[0].logged, overlap);
    return 0;
}
