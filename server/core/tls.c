#include "core/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <stdio.h>
#include <string.h>

#include "base/h2o_glue.h"

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
