#include "test.h"
void test_sched(void) {}
