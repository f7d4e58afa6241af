// Compile-time baseline: the standard headers every user TU already pays for.
// three_budgets.cpp is measured against this file (target: <= 2.5x at g++ -O0).
#include <array>
#include <string>
#include <vector>
