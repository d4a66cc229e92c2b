#include "test.h"
void test_api(void) {}
