/* The shared library of the report fixtures: each entry point fails in its own way. */
#ifndef FAULT_H
#define FAULT_H
int fault_use_after_free(int count);
void fault_backtrace(int depth);
void fault_stop(int depth);
#endif
