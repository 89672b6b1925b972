// Workgroup-wide sum and max of one float per invocation: subgroup sums, then one pass over them in shared memory.
// Needs `common.glsl`. Every invocation of the workgroup must call it (it has barriers).
shared float reduce_partials[64];

float workgroup_sum(float value) {
    float subgroup_total = subgroupAdd(value);
    if (subgroupElect()) {
        reduce_partials[gl_SubgroupID] = subgroup_total;
    }
    barrier();
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        total += reduce_partials[i];
    }
    barrier();
    return total;
}

float workgroup_max(float value) {
    float subgroup_max = subgroupMax(value);
    if (subgroupElect()) {
        reduce_partials[gl_SubgroupID] = subgroup_max;
    }
    barrier();
    float result = reduce_partials[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) {
        result = max(result, reduce_partials[i]);
    }
    barrier();
    return result;
}
