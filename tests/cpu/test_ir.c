#include "test.h"
void test_ir(void) {}
