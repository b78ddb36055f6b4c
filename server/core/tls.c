#include "core/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <stdio.h>
#include <string.h>

#include "base/h2o_glue.h"

/* TLS 1.2's suites unless `tls.ciphers` says otherwise: Mozilla's
 * "intermediate" profile's forward-secret AEAD suites. OpenSSL's own default
 * also offers CBC suites (ECDHE-*-AES*-SHA, -SHA256/384), whose MAC-then-
 * encrypt construction is the reason for Lucky13-style padding oracles;
 * every client that speaks TLS 1.2 has GCM or ChaCha20-Poly1305. The
 * profile's DHE suites are left out: they need DH parameters and are slower
 * than ECDHE for no client that lacks ECDHE. TLS 1.3's suites (all AEAD)
 * stay OpenSSL's. */
#define DEFAULT_TLS12_CIPHERS                                                                                          \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"                         \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* OpenSSL's error queue, as one line, for the operator. */
static void openssl_reason(char *buf, size_t size)
{
    unsigned long e = ERR_get_error();
    if (e == 0) {
        snprintf(buf, size, "%s", errno ? strerror(errno) : "unknown error");
        return;
    }
    ERR_error_string_n(e, buf, size);
    ERR_clear_error();
}

SSL_CTX *weft_tls_context(const weft_config *cfg, const weft_listen_cfg *l, weft_errors *errs)
{
    const weft_tls_cfg *t = l->tls;
    char why[512];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        openssl_reason(why, sizeof(why));
        weft_errors_add(errs, "%s:%d: listen %s:%u: cannot create a TLS context: %s", cfg->path, l->line, l->host,
                        l->cfg_port, why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, t->min_version);
    /* Compression invites CRIME; the server's cipher order is the operator's choice. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
    errno = 0;
    ERR_clear_error();
    if (t->ciphers == NULL && SSL_CTX_set_cipher_list(ctx, DEFAULT_TLS12_CIPHERS) != 1) {
        openssl_reason(why, sizeof(why));
        weft_errors_add(errs, "%s:%d: listen %s:%u: this OpenSSL offers none of weft's default TLS 1.2 ciphers (%s): "
                        "set tls.ciphers",
                        cfg->path, l->line, l->host, l->cfg_port, why);
        goto fail;
    }
    if (t->ciphers != NULL && SSL_CTX_set_cipher_list(ctx, t->ciphers) != 1) {
        openssl_reason(why, sizeof(why));
        weft_errors_add(errs, "%s:%d: listen %s:%u: tls.ciphers '%s' selects no usable cipher: %s", cfg->path,
                        l->line, l->host, l->cfg_port, t->ciphers, why);
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, t->certificate) != 1) {
        openssl_reason(why, sizeof(why));
        weft_errors_add(errs, "%s:%d: listen %s:%u: cannot use certificate chain %s: %s", cfg->path, l->line,
                        l->host, l->cfg_port, t->certificate, why);
        goto fail;
    }
    errno = 0;
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
        openssl_reason(why, sizeof(why));
        if (strstr(why, "mismatch") != NULL) {
            weft_errors_add(errs, "%s:%d: listen %s:%u: private key %s does not match certificate %s", cfg->path,
                            l->line, l->host, l->cfg_port, t->key, t->certificate);
            goto fail;
        }
        weft_errors_add(errs, "%s:%d: listen %s:%u: cannot use private key %s: %s", cfg->path, l->line, l->host,
                        l->cfg_port, t->key, why);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        weft_errors_add(errs, "%s:%d: listen %s:%u: private key %s does not match certificate %s", cfg->path,
                        l->line, l->host, l->cfg_port, t->key, t->certificate);
        goto fail;
    }
    h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}
