/* bench/reference.c: the HTTP ceiling of this machine for `make bench`.
 *
 * A libmicrohttpd server that answers every request with the same small JSON body,
 * started with the same daemon flags and thread count as `portaria serve` (epoll,
 * internal threads, turbo). Whatever portaria does beyond this (routing, the database,
 * bearer checks, JSON) is what the ratio `portaria / reference` measures; wrk, the
 * kernel and libmicrohttpd are common to both.
 *
 * Build: cc -O2 -o reference bench/reference.c $(pkg-config --cflags --libs libmicrohttpd)
 * Run:   reference PORT [THREADS]     prints "READY <port>" once listening; stops on SIGTERM.
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The size of portaria's /healthz answer, so both send the same bytes. */
static const char body[] = "{\"database\":\"ok\",\"status\":\"ok\"}";
static struct MHD_Response *response;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **state) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    /* A request body (none in the bench) arrives in calls after the first; drop it. */
    if (*state == NULL) { *state = (void *)1; return MHD_YES; }
    if (*upload_data_size != 0) { *upload_data_size = 0; return MHD_YES; }
    return MHD_queue_response(connection, MHD_HTTP_OK, response);
}

static volatile sig_atomic_t stopping;
static void stop(int signal_number) { (void)signal_number; stopping = 1; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: reference PORT [THREADS]\n"); return 2; }
    int port = atoi(argv[1]);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : (unsigned)(cores > 2 ? cores : 2);
    if (port <= 0 || port > 65535 || threads == 0) { fprintf(stderr, "reference: bad arguments\n"); return 2; }
    response = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (response == NULL || MHD_add_response_header(response, "Content-Type", "application/json") != MHD_YES) return 1;
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_USE_ITC, (uint16_t)port, NULL, NULL, answer, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, 10000u,
        MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (daemon == NULL) { fprintf(stderr, "reference: cannot listen on port %d\n", port); return 1; }
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    printf("READY %d\n", port);
    fflush(stdout);
    while (!stopping) pause();
    MHD_stop_daemon(daemon);
    MHD_destroy_response(response);
    return 0;
}
