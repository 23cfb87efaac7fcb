/* bench/apns-sink.c: an APNs stand-in for `bench/push` that answers in microseconds and
 * records when each request arrived.
 *
 * HTTP/2 over TLS (libnghttp2 + OpenSSL, ALPN h2), one thread, poll. Every request gets
 * 200 with an `apns-id` header (the request's, else "0") and no body, as APNs answers. With
 * a record file, each request appends one line once its last frame has been parsed:
 *
 *   <CLOCK_REALTIME seconds.nanoseconds when its first bytes were read>\t<apns-push-type>\t<:path>\t<body>
 *
 * The stamp is taken right after the read() that returned the request's HEADERS frame,
 * before any parsing, so it is "bytes arrived", not "sink finished". The body (the push
 * payload, at most 8 KiB kept) lets the bench find the visit a push was for.
 *
 * Build: cc -O2 -o apns-sink bench/apns-sink.c -lnghttp2 -lssl -lcrypto
 * Run:   apns-sink PORT CERT KEY [RECORD]    PORT 0 picks one; prints "READY <port>".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 64
#define BODY_KEPT 8192

struct stream {
    struct timespec arrived;
    char path[512];
    char push_type[32];
    char apns_id[64];
    size_t body_length;
    char body[BODY_KEPT];
};

struct connection {
    int fd;
    SSL *ssl;
    nghttp2_session *session;
    int handshaken;
    struct timespec last_read;
    unsigned char *out;
    size_t out_length, out_capacity;
};

static SSL_CTX *context;
static FILE *record;
static struct connection *connections[MAX_CONNECTIONS];

static void copy_field(char *to, size_t capacity, const uint8_t *from, size_t length) {
    if (length >= capacity) length = capacity - 1;
    memcpy(to, from, length);
    to[length] = 0;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    struct connection *c = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    struct stream *s = calloc(1, sizeof *s);
    if (s == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE;
    s->arrived = c->last_read;
    strcpy(s->apns_id, "0");
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, s);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user) {
    (void)flags; (void)user;
    struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (s == NULL) return 0;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0) copy_field(s->path, sizeof s->path, value, valuelen);
    else if (namelen == 14 && memcmp(name, "apns-push-type", 14) == 0) copy_field(s->push_type, sizeof s->push_type, value, valuelen);
    else if (namelen == 7 && memcmp(name, "apns-id", 7) == 0) copy_field(s->apns_id, sizeof s->apns_id, value, valuelen);
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t length,
                         void *user) {
    (void)flags; (void)user;
    struct stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (s == NULL || !record) return 0;
    size_t room = BODY_KEPT - 1 - s->body_length;
    if (length > room) length = room;
    memcpy(s->body + s->body_length, data, length);
    s->body_length += length;
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)user;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (s == NULL) return 0;
    nghttp2_nv headers[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"apns-id", (uint8_t *)s->apns_id, 7, strlen(s->apns_id), NGHTTP2_NV_FLAG_NONE},
    };
    /* nghttp2 copies the header block now: the stream's buffers may go with the stream. */
    if (nghttp2_submit_response(session, frame->hd.stream_id, headers, 2, NULL) != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (record) {
        s->body[s->body_length] = 0;
        for (size_t i = 0; i < s->body_length; i++) if (s->body[i] == '\n' || s->body[i] == '\t') s->body[i] = ' ';
        fprintf(record, "%lld.%09ld\t%s\t%s\t%s\n", (long long)s->arrived.tv_sec, s->arrived.tv_nsec, s->push_type, s->path, s->body);
        fflush(record);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user) {
    (void)error_code; (void)user;
    free(nghttp2_session_get_stream_user_data(session, stream_id));
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    return 0;
}

static int select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                     unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    for (unsigned int i = 0; i < inlen; i += 1u + in[i]) {
        if (in[i] == 2 && i + 3 <= inlen && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static void drop(int index) {
    struct connection *c = connections[index];
    if (c->session) nghttp2_session_del(c->session);
    SSL_free(c->ssl);
    close(c->fd);
    free(c->out);
    free(c);
    connections[index] = NULL;
}

/* Frames nghttp2 has ready, into the connection's buffer, then as much of it as TLS takes. */
static int flush(struct connection *c) {
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->session, &data);
        if (n < 0) return -1;
        if (n == 0) break;
        if (c->out_length + (size_t)n > c->out_capacity) {
            size_t capacity = (c->out_length + (size_t)n) * 2;
            unsigned char *grown = realloc(c->out, capacity);
            if (grown == NULL) return -1;
            c->out = grown;
            c->out_capacity = capacity;
        }
        memcpy(c->out + c->out_length, data, (size_t)n);
        c->out_length += (size_t)n;
    }
    while (c->out_length > 0) {
        int n = SSL_write(c->ssl, c->out, (int)c->out_length);
        if (n <= 0) {
            int error = SSL_get_error(c->ssl, n);
            return error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ ? 0 : -1;
        }
        memmove(c->out, c->out + n, c->out_length - (size_t)n);
        c->out_length -= (size_t)n;
    }
    return 0;
}

static int start_session(struct connection *c) {
    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    int rv = nghttp2_session_server_new(&c->session, callbacks, c);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0) return -1;
    /* APNs allows 1,000 streams per connection; a 1 MiB window so bodies never wait. */
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
                                         {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2) != 0) return -1;
    return nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 1 << 24) == 0 ? 0 : -1;
}

/* Moves one connection on; returns -1 when it is finished. */
static int progress(struct connection *c) {
    if (!c->handshaken) {
        int rv = SSL_accept(c->ssl);
        if (rv != 1) {
            int error = SSL_get_error(c->ssl, rv);
            return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ? 0 : -1;
        }
        c->handshaken = 1;
        if (start_session(c) != 0) return -1;
    }
    unsigned char buffer[65536];
    for (;;) {
        int n = SSL_read(c->ssl, buffer, sizeof buffer);
        if (n <= 0) {
            int error = SSL_get_error(c->ssl, n);
            if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) break;
            return -1;
        }
        clock_gettime(CLOCK_REALTIME, &c->last_read);
        if (nghttp2_session_mem_recv(c->session, buffer, (size_t)n) < 0) return -1;
    }
    if (flush(c) != 0) return -1;
    return nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session) || c->out_length ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: apns-sink PORT CERT KEY [RECORD]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (argc > 4 && (record = fopen(argv[4], "a")) == NULL) { perror(argv[4]); return 1; }
    context = SSL_CTX_new(TLS_server_method());
    if (SSL_CTX_use_certificate_chain_file(context, argv[2]) != 1 ||
        SSL_CTX_use_PrivateKey_file(context, argv[3], SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_alpn_select_cb(context, select_h2, NULL);

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 64) != 0 ||
        getsockname(listener, (struct sockaddr *)&address, &length) != 0) {
        perror("listen");
        return 1;
    }
    printf("READY %d\n", ntohs(address.sin_port));
    fflush(stdout);

    struct pollfd descriptors[MAX_CONNECTIONS + 1];
    for (;;) {
        descriptors[0] = (struct pollfd){.fd = listener, .events = POLLIN};
        for (int i = 0; i < MAX_CONNECTIONS; i++) {
            struct connection *c = connections[i];
            descriptors[i + 1] = (struct pollfd){.fd = c ? c->fd : -1, .events = POLLIN};
            if (c && c->out_length) descriptors[i + 1].events |= POLLOUT;
        }
        if (poll(descriptors, MAX_CONNECTIONS + 1, -1) < 0 && errno != EINTR) return 1;
        if (descriptors[0].revents & POLLIN) {
            int fd;
            while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                int slot = 0;
                while (slot < MAX_CONNECTIONS && connections[slot]) slot++;
                if (slot == MAX_CONNECTIONS) { close(fd); continue; }
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                struct connection *c = calloc(1, sizeof *c);
                c->fd = fd;
                c->ssl = SSL_new(context);
                SSL_set_fd(c->ssl, fd);
                connections[slot] = c;
                if (progress(c) != 0) drop(slot);
            }
        }
        for (int i = 0; i < MAX_CONNECTIONS; i++) {
            if (connections[i] && descriptors[i + 1].revents && progress(connections[i]) != 0) drop(i);
        }
    }
}
