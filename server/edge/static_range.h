/*
 * Range requests a static route lets through to h2o. h2o's file handler
 * serves any list of ranges, overlapping or repeated, as multipart parts:
 * "bytes=0-,0-,0-,..." would send the file once per item from one short
 * header (an amplification, CVE-2011-3192 in Apache's day). weft lets one
 * range through as it is, and several only when they are explicit
 * (first-last), ascending, disjoint and at most WEFT_RANGE_MAX_PARTS; any
 * other Range is ignored, as RFC 9110 14.2 allows, and the whole file is
 * sent once (200).
 */
#ifndef WEFT_EDGE_STATIC_RANGE_H
#define WEFT_EDGE_STATIC_RANGE_H

#include <stddef.h>

#define WEFT_RANGE_MAX_PARTS 16

/** 1: the Range value may go to h2o; 0: drop it and answer with the whole file. */
int weft_range_acceptable(const char *v, size_t len);

#endif
