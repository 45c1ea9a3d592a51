/* Ends one instantiation of probe_simd.h: forgets the vector macros it was given, so the next
 * instruction set can define its own. Included right after each #include "probe_simd.h". */
#undef V8
#undef V8_ISA
#undef V8_ZERO
#undef V8_LDD
#undef V8_LDF
#undef V8_SET1
#undef V8_FMA
#undef V8_ADD
#undef V8_SUB
#undef V8_MUL
#undef V8_ST
#undef V8_ACC
#undef V8_DOT_OUT
#undef V8_NODE_OC
#undef V8_REG
#undef V8_FWD_ROWS
#undef V8_BWD_JB
#undef V8_HALF
#undef V8_HALF_LDF
#undef V8_HALF_LDD
#undef V8_HALF_FMA
#undef FT_BODY
#undef V8_HALF_SET1
#undef BT_BODY
