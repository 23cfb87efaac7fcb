#ifndef PORTARIA_CMICROHTTPD_SHIM_H
#define PORTARIA_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* Swift cannot call variadic C functions nor receive a va_list callback; these
   wrappers give MHD_start_daemon and MHD_get_connection_info fixed signatures. */

typedef void (*portaria_mhd_log_fn)(const char *message);

static inline void portaria_mhd_logger(void *cls, const char *fmt, va_list ap) {
    char buffer[512];
    vsnprintf(buffer, sizeof buffer, fmt, ap);
    portaria_mhd_log_fn sink = (portaria_mhd_log_fn)cls;
    if (sink) sink(buffer);
}

/* Leaves percent-escapes as they came: libmicrohttpd would otherwise decode the path
   before the router splits it, so an encoded '/' would split a value and an encoded '%'
   would be decoded a second time by the router. The router decodes each path segment
   once; the server decodes query arguments itself (PercentDecoding). */
static inline size_t portaria_mhd_keep_escapes(void *cls, struct MHD_Connection *connection, char *value) {
    (void)cls; (void)connection;
    return strlen(value);
}

struct portaria_mhd_config {
    unsigned int flags;
    int listen_socket;                   /* bound and listening; the daemon takes it */
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;      /* bounds the request line + headers */
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_cls;
    MHD_RequestCompletedCallback completed_handler;
    void *completed_handler_cls;
    MHD_NotifyConnectionCallback connection_handler; /* accepted / about to be closed */
    void *connection_handler_cls;
    MHD_AcceptPolicyCallback accept_policy;          /* before a connection is made; NULL: all */
    void *accept_policy_cls;
    portaria_mhd_log_fn log_sink;
};

static inline struct MHD_Daemon *portaria_mhd_start(const struct portaria_mhd_config *c) {
    return MHD_start_daemon(c->flags | MHD_USE_ERROR_LOG, 0,
        c->accept_policy, c->accept_policy_cls,
        c->access_handler, c->access_handler_cls,
        MHD_OPTION_EXTERNAL_LOGGER, portaria_mhd_logger, (void *)c->log_sink,
        MHD_OPTION_LISTEN_SOCKET, c->listen_socket,
        MHD_OPTION_THREAD_POOL_SIZE, c->thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, c->connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->per_ip_connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, c->connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->connection_memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, c->completed_handler, c->completed_handler_cls,
        MHD_OPTION_NOTIFY_CONNECTION, c->connection_handler, c->connection_handler_cls,
        MHD_OPTION_UNESCAPE_CALLBACK, portaria_mhd_keep_escapes, NULL,
        MHD_OPTION_END);
}

/* MHD_Result is a closed enum that Swift imports with renamed cases; fixed names here. */
static const enum MHD_Result portaria_mhd_yes = MHD_YES;
static const enum MHD_Result portaria_mhd_no = MHD_NO;
static const enum MHD_ValueKind portaria_mhd_header_kind = MHD_HEADER_KIND;
static const enum MHD_ValueKind portaria_mhd_get_argument_kind = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode portaria_mhd_respmem_must_copy = MHD_RESPMEM_MUST_COPY;

/* Termination reasons as plain ints for logging. */
static inline int portaria_mhd_termination_code(enum MHD_RequestTerminationCode code) { return (int)code; }

/* The peer address of a connection (NULL if unknown). */
static inline const struct sockaddr *portaria_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/* Whether a connection notification is the accept (else: the socket is about to close). */
static inline bool portaria_mhd_notify_is_start(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_STARTED;
}

/* The socket of a connection (-1 if unknown). */
static inline int portaria_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* What the connection notification stored for this socket (NULL if nothing). */
static inline void *portaria_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* The port actually bound (useful with port 0 in tests). */
static inline uint16_t portaria_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static inline unsigned int portaria_mhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/* MHD_upgrade_action is variadic. */
static inline enum MHD_Result portaria_mhd_upgrade_close(struct MHD_UpgradeResponseHandle *urh) {
    return MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}
#endif
