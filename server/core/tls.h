/*
 * TLS for listeners with a `tls` group, through OpenSSL 3 and h2o's own TLS
 * support: certificate chain and key checked against each other, a minimum
 * protocol version, optional cipher preferences, and ALPN offering h2 then
 * http/1.1. Contexts belong to a generation, so a reload re-reads the files
 * (a renewed certificate takes effect without a restart) and a broken new
 * certificate is refused while the old context keeps serving.
 */
#ifndef WEFT_TLS_H
#define WEFT_TLS_H

#include <openssl/ssl.h>

#include "config/config.h"
#include "base/errors.h"

/** A server context for `l`; NULL with a message naming the file in `errs`. */
SSL_CTX *weft_tls_context(const weft_config *cfg, const weft_listen_cfg *l, weft_errors *errs);

#endif
