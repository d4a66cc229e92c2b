#include "test.h"
void test_compile(void) {}
