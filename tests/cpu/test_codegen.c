#include "test.h"
void test_codegen(void) {}
