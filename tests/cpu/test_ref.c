#include "test.h"
void test_ref(void) {}
