// hiccup: how often a thread that never blocks is kept off its CPU, and for how long.
//
// It spins for the given seconds reading CLOCK_MONOTONIC (vDSO, no system call) and counts
// the gaps between consecutive reads above 5/10/20/50/100/200 us: time the thread did not
// run, taken by the kernel, interrupts or the hypervisor. The callback-latency probes'
// dispatcher spins the same way, so these gaps bound the tail any dispatcher can reach on
// the host (docs/design.md, "Dispatch latency"). Build: gcc -O2 -static -o hiccup hiccup.c
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    const long long limits[] = {5000, 10000, 20000, 50000, 100000, 200000};
    long long counts[6] = {0}, worst = 0, total_gap = 0;
    long long start = now_ns(), end = start + (long long)(seconds * 1e9), prev = start;
    for (long long t = prev; t < end; prev = t) {
        t = now_ns();
        long long gap = t - prev;
        if (gap > worst) worst = gap;
        for (int i = 0; i < 6; i++) {
            if (gap > limits[i]) counts[i]++;
        }
        if (gap > 5000) total_gap += gap;
    }
    printf("{\"seconds\": %.1f, \"gaps_over_us\": {\"5\": %lld, \"10\": %lld, \"20\": %lld, \"50\": %lld, "
           "\"100\": %lld, \"200\": %lld}, \"max_us\": %.1f, \"lost_fraction\": %.2e}\n",
           seconds, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], worst / 1e3,
           total_gap / (seconds * 1e9));
    return 0;
}
