/* OpenSSL server sessions for the TLS listeners; see tls.h. */
#include "security/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/error.h"
#include "core/say.h"
#include "security/principal_rules.h"

/* Read-only once built (see tls.h). */
struct kiq_tls {
    SSL_CTX *ctx;
    kiq_principal_rules_t *rules; /* ssl.principal.mapping.rules; NULL on a client side */
    bool client;                  /* kiq_tls_client_new's */
    bool verify_host;             /* client: ssl.endpoint.identification.algorithm=https */
};

/* Owned by the processor thread of its connection. */
struct kiq_tls_conn {
    const kiq_tls_t *tls;
    SSL *ssl;
    char *principal; /* set when the handshake completes */
};

/* The reason OpenSSL left on this thread's queue, into the error slot. */
static int ssl_failure(const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return kiq_error_set("%s: %s", what, e ? buf : "unknown failure");
}

static BIO *open_source(const char *location, const char *text, const char *what)
{
    BIO *b = *text ? BIO_new_mem_buf(text, -1) : BIO_new_file(location, "rb");
    if (!b) ssl_failure(what);
    return b;
}

/* Every certificate of a PEM source onto the store, or as the chain. */
static int load_pem_certs(SSL_CTX *ctx, BIO *b, bool chain, const char *what)
{
    int n = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        int ok = chain ? (n == 0 ? SSL_CTX_use_certificate(ctx, x) : SSL_CTX_add1_chain_cert(ctx, x))
                       : X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x);
        X509_free(x);
        if (ok != 1) return ssl_failure(what);
        n++;
    }
    ERR_clear_error(); /* the end of the input reads as a "no start line" error */
    if (n == 0) return kiq_error_set("%s: no certificate in it", what);
    return 0;
}

static int load_keystore(SSL_CTX *ctx, const kiq_config_t *c)
{
    const char *type = kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_TYPE);
    const char *loc = kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_LOCATION);
    const char *chain = kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_CERTIFICATE_CHAIN);
    const char *key = kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_KEY);
    const char *pass = kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_PASSWORD);
    const char *key_pass = kiq_config_str(c, KIQ_CFG_SSL_KEY_PASSWORD);
    if (!*key_pass) key_pass = pass;
    if (strcasecmp(type, "PEM") == 0) {
        if (!*loc && (!*chain || !*key))
            return kiq_error_set("ssl.keystore.type PEM needs ssl.keystore.location or "
                                 "ssl.keystore.certificate.chain and ssl.keystore.key");
        BIO *b = open_source(loc, *loc ? "" : chain, "ssl.keystore");
        if (!b) return -1;
        int rc = load_pem_certs(ctx, b, true, "ssl.keystore certificate chain");
        if (rc == 0 && !*loc) {
            BIO_free(b);
            b = BIO_new_mem_buf(key, -1);
        } else if (rc == 0)
            (void)BIO_reset(b);
        EVP_PKEY *pk = rc == 0 && b ? PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)key_pass) : NULL;
        BIO_free(b);
        if (rc != 0) return -1;
        if (!pk) return ssl_failure("ssl.keystore private key (is ssl.key.password right?)");
        int ok = SSL_CTX_use_PrivateKey(ctx, pk);
        EVP_PKEY_free(pk);
        if (ok != 1) return ssl_failure("ssl.keystore private key");
    } else if (strcasecmp(type, "PKCS12") == 0) {
        if (!*loc) return kiq_error_set("ssl.keystore.type PKCS12 needs ssl.keystore.location");
        BIO *b = BIO_new_file(loc, "rb");
        PKCS12 *p12 = b ? d2i_PKCS12_bio(b, NULL) : NULL;
        BIO_free(b);
        if (!p12) return ssl_failure(loc);
        EVP_PKEY *pk = NULL;
        X509 *cert = NULL;
        STACK_OF(X509) *ca = NULL;
        int ok = PKCS12_parse(p12, pass, &pk, &cert, &ca);
        PKCS12_free(p12);
        if (ok == 1 && (!pk || !cert)) {
            ERR_clear_error();
            kiq_error_set("%s: no private key and certificate in it", loc);
            ok = -1;
        }
        if (ok == 1) ok = SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, pk) == 1;
        for (int i = 0; ok == 1 && ca && i < sk_X509_num(ca); i++)
            ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(ca, i));
        EVP_PKEY_free(pk);
        X509_free(cert);
        sk_X509_pop_free(ca, X509_free);
        if (ok == -1) return -1;
        if (ok != 1) return ssl_failure("ssl.keystore (is ssl.keystore.password right?)");
    } else
        return kiq_error_set("ssl.keystore.type %s is not read here: PEM or PKCS12", type);
    if (SSL_CTX_check_private_key(ctx) != 1) return ssl_failure("ssl.keystore: the key does not match the certificate");
    return 0;
}

/* 0, 1 when no trust store is configured, -1 */
static int load_truststore(SSL_CTX *ctx, const kiq_config_t *c)
{
    const char *type = kiq_config_str(c, KIQ_CFG_SSL_TRUSTSTORE_TYPE);
    const char *loc = kiq_config_str(c, KIQ_CFG_SSL_TRUSTSTORE_LOCATION);
    const char *certs = kiq_config_str(c, KIQ_CFG_SSL_TRUSTSTORE_CERTIFICATES);
    if (!*loc && !*certs) return 1;
    if (strcasecmp(type, "PEM") == 0) {
        BIO *b = open_source(loc, certs, "ssl.truststore");
        if (!b) return -1;
        int rc = load_pem_certs(ctx, b, false, "ssl.truststore");
        BIO_free(b);
        return rc;
    }
    if (strcasecmp(type, "PKCS12") != 0)
        return kiq_error_set("ssl.truststore.type %s is not read here: PEM or PKCS12", type);
    if (!*loc) return kiq_error_set("ssl.truststore.type PKCS12 needs ssl.truststore.location");
    BIO *b = BIO_new_file(loc, "rb");
    PKCS12 *p12 = b ? d2i_PKCS12_bio(b, NULL) : NULL;
    BIO_free(b);
    if (!p12) return ssl_failure(loc);
    X509 *cert = NULL;
    STACK_OF(X509) *ca = NULL;
    int ok = PKCS12_parse(p12, kiq_config_str(c, KIQ_CFG_SSL_TRUSTSTORE_PASSWORD), NULL, &cert, &ca);
    PKCS12_free(p12);
    if (ok != 1) return ssl_failure("ssl.truststore (is ssl.truststore.password right?)");
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int n = 0;
    if (cert) n += X509_STORE_add_cert(store, cert) == 1;
    for (int i = 0; ca && i < sk_X509_num(ca); i++) n += X509_STORE_add_cert(store, sk_X509_value(ca, i)) == 1;
    X509_free(cert);
    sk_X509_pop_free(ca, X509_free);
    ERR_clear_error();
    return n ? 0 : kiq_error_set("%s: no certificate in it", loc);
}

kiq_tls_t *kiq_tls_new(const kiq_config_t *c)
{
    kiq_tls_t *t = calloc(1, sizeof *t);
    if (!t) return kiq_error_set("out of memory"), NULL;
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_server_method());
    if (!t->ctx) {
        ssl_failure("TLS context");
        free(t);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* a write that stopped half way is retried from another buffer of the same bytes */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const char *auth = kiq_config_str(c, KIQ_CFG_SSL_CLIENT_AUTH);
    t->rules = kiq_principal_rules_new(kiq_config_str(c, KIQ_CFG_SSL_PRINCIPAL_MAPPING_RULES));
    int trust = !t->rules ? -1 : load_keystore(t->ctx, c) == 0 ? load_truststore(t->ctx, c) : -1;
    if (trust == 1 && strcmp(auth, "none") != 0) trust = kiq_error_set("ssl.client.auth=%s needs a trust store (ssl.truststore.location or ssl.truststore.certificates)", auth);
    if (trust < 0) {
        kiq_tls_free(t);
        return NULL;
    }
    int verify = strcmp(auth, "required") == 0    ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                 : strcmp(auth, "requested") == 0 ? SSL_VERIFY_PEER
                                                  : SSL_VERIFY_NONE;
    SSL_CTX_set_verify(t->ctx, verify, NULL);
    /* OpenSSL refuses to resume a session (the JVM resumes its second
     * connection) where the peer is verified unless the context names its
     * sessions; a resumed session keeps the client's certificate */
    static const unsigned char sid_ctx[] = "kafkaiq";
    if (SSL_CTX_set_session_id_context(t->ctx, sid_ctx, sizeof sid_ctx - 1) != 1) {
        ssl_failure("TLS session id context");
        kiq_tls_free(t);
        return NULL;
    }
    return t;
}

kiq_tls_t *kiq_tls_client_new(const kiq_config_t *c)
{
    kiq_tls_t *t = calloc(1, sizeof *t);
    if (!t) return kiq_error_set("out of memory"), NULL;
    ERR_clear_error();
    t->client = true;
    t->verify_host = strcasecmp(kiq_config_str(c, KIQ_CFG_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM), "https") == 0;
    if (!(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        ssl_failure("TLS context");
        free(t);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* without a trust store the system's, as a JVM's default trust store */
    int trust = load_truststore(t->ctx, c);
    if (trust == 1) trust = SSL_CTX_set_default_verify_paths(t->ctx) == 1 ? 0 : ssl_failure("the system's CA certificates");
    /* the key store, when there is one, is this broker's certificate for peers that ask for it (mutual TLS) */
    bool keystore = *kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_LOCATION) || *kiq_config_str(c, KIQ_CFG_SSL_KEYSTORE_CERTIFICATE_CHAIN);
    if (trust != 0 || (keystore && load_keystore(t->ctx, c) != 0)) {
        kiq_tls_free(t);
        return NULL;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    return t;
}

kiq_tls_conn_t *kiq_tls_conn_connect(kiq_tls_t *t, int fd, const char *host)
{
    kiq_tls_conn_t *tc = calloc(1, sizeof *tc);
    if (!tc) return kiq_error_set("out of memory"), NULL;
    tc->tls = t;
    if (!(tc->ssl = SSL_new(t->ctx)) || SSL_set_fd(tc->ssl, fd) != 1) {
        ssl_failure("TLS session");
        kiq_tls_conn_free(tc);
        return NULL;
    }
    /* the peer's certificate must name the address dialled: an IP in its
     * subjectAltName, or the host name (also sent as SNI) */
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    int ok = !t->verify_host ? 1
             : ip            ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tc->ssl), host)
                             : SSL_set1_host(tc->ssl, host) == 1 && SSL_set_tlsext_host_name(tc->ssl, host) == 1;
    if (ok != 1) {
        ssl_failure("TLS peer name");
        kiq_tls_conn_free(tc);
        return NULL;
    }
    SSL_set_connect_state(tc->ssl);
    return tc;
}

void kiq_tls_free(kiq_tls_t *t)
{
    if (!t) return;
    SSL_CTX_free(t->ctx);
    kiq_principal_rules_free(t->rules);
    free(t);
}

kiq_tls_conn_t *kiq_tls_conn_new(kiq_tls_t *t, int fd)
{
    kiq_tls_conn_t *tc = calloc(1, sizeof *tc);
    if (!tc) return NULL;
    tc->tls = t;
    if (!(tc->ssl = SSL_new(t->ctx)) || SSL_set_fd(tc->ssl, fd) != 1) {
        ERR_clear_error();
        kiq_tls_conn_free(tc);
        return NULL;
    }
    SSL_set_accept_state(tc->ssl);
    return tc;
}

void kiq_tls_conn_free(kiq_tls_conn_t *tc)
{
    if (!tc) return;
    SSL_free(tc->ssl);
    free(tc->principal);
    free(tc);
}

/* User: and the name ssl.principal.mapping.rules make of the subject in
 * RFC 2253 order (DEFAULT: the whole of it), as Kafka's default principal
 * builder names a certificate's owner; User:ANONYMOUS without one. -1
 * when no rule matches: the connection is refused, as Kafka does. */
static int take_principal(kiq_tls_conn_t *tc)
{
    X509 *peer = SSL_get1_peer_certificate(tc->ssl);
    char name[1024] = "ANONYMOUS";
    int rc = 0;
    if (peer) {
        char dn[1024] = "";
        BIO *b = BIO_new(BIO_s_mem());
        if (b && X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
            char *text;
            long n = BIO_get_mem_data(b, &text);
            snprintf(dn, sizeof dn, "%.*s", (int)(n > 0 ? n : 0), text);
        }
        BIO_free(b);
        X509_free(peer);
        rc = kiq_principal_rules_apply(tc->tls->rules, dn, name, sizeof name);
    }
    if (rc == 0 && !(tc->principal = malloc(strlen(name) + 6))) rc = kiq_error_set("out of memory");
    if (rc != 0) return -1;
    sprintf(tc->principal, "User:%s", name);
    KIQ_DEBUG("TLS session (%s) as %s", SSL_get_version(tc->ssl), tc->principal);
    return 0;
}

/* The result of an SSL call that moved nothing, as errno. */
static ssize_t io_failure(kiq_tls_conn_t *tc, int rc, bool *other, bool reading)
{
    int e = SSL_get_error(tc->ssl, rc);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        *other = (e == SSL_ERROR_WANT_WRITE) == reading;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        if (reading) return 0;
        errno = EPIPE;
        return -1;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (rc == 0 || errno == 0) {
            if (reading && SSL_is_init_finished(tc->ssl)) return 0; /* closed without close_notify */
            errno = ECONNRESET;
        }
        kiq_error_errno("TLS");
        return -1;
    default:
        /* a peer that closed without close_notify (a port probe, a client
         * giving up) has simply gone */
        if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            ERR_clear_error();
            if (reading) return 0;
            errno = ECONNRESET;
            return -1;
        }
        ssl_failure(SSL_is_init_finished(tc->ssl) ? "TLS" : "TLS handshake");
        errno = EPROTO;
        return -1;
    }
}

ssize_t kiq_tls_read(kiq_tls_conn_t *tc, void *buf, size_t len, bool *other)
{
    *other = false;
    ERR_clear_error();
    size_t got = 0;
    int ok = SSL_read_ex(tc->ssl, buf, len, &got);
    if (!tc->tls->client && !tc->principal && SSL_is_init_finished(tc->ssl) && take_principal(tc) != 0) {
        errno = EACCES;
        return -1;
    }
    return ok == 1 ? (ssize_t)got : io_failure(tc, ok, other, true);
}

ssize_t kiq_tls_write(kiq_tls_conn_t *tc, const void *buf, size_t len, bool *other)
{
    *other = false;
    ERR_clear_error();
    size_t put = 0;
    int ok = SSL_write_ex(tc->ssl, buf, len, &put);
    return ok == 1 ? (ssize_t)put : io_failure(tc, ok, other, false);
}

size_t kiq_tls_pending(kiq_tls_conn_t *tc) { return (size_t)SSL_pending(tc->ssl); }

const char *kiq_tls_principal(kiq_tls_conn_t *tc) { return tc->principal; }
