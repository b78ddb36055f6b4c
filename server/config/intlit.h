/*
 * Integer settings made to mean what their text says, whichever libconfig
 * read them. Debian 12's libconfig 1.5 reads a decimal integer without `L`
 * with atoi() (its released scanner.l: `yylval->ival = atoi(yytext)`), so
 * `max_body = 4294967296;` is 0 and 5368709120 is 1073741824, with no error
 * and an int setting the tree cannot tell from a real 0; every libconfig up
 * to 1.7.3 also cuts a hex literal without `L` to 32 bits (strtoul into an
 * int), and `L` literals past 2^63 saturate. Only the file's text has the
 * number, so each integer setting is matched to its literal there.
 */
#ifndef WEFT_CONFIG_INTLIT_H
#define WEFT_CONFIG_INTLIT_H

#include <libconfig.h>

#include "base/errors.h"

/**
 * After a successful config_read_string/config_read_file of `lc`: every
 * integer setting whose literal libconfig misread becomes a 64-bit setting
 * holding the literal's value; a literal outside the 64-bit range, an array
 * made of 32- and 64-bit elements (what libconfig 1.7 refuses) or a setting
 * that matches no literal is an error at FILE:LINE. `main_file` names the
 * text read (settings without a file, or with this one, are `main_text`
 * when it is not NULL; other files are read again). Returns the number of
 * errors added.
 */
int weft_cfg_check_integers(config_t *lc, const char *main_file, const char *main_text, weft_errors *errs);

#endif
