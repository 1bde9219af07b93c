/*
 * reduce_min.c - the pyramid reduction's row loops for method min, one per
 * element type (reduce_rows.h says why they are a file of their own).
 */
#include "reduce_rows.h"

RD_ROWS_METHOD(min, SP_RD_MIN)
