#include <shaderc/shaderc.h>
