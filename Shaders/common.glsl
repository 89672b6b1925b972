// Shared by every phi-gpu compute shader: extensions and small helpers.
// Included after `#version 450` and `#extension GL_GOOGLE_include_directive : require`.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

// The workgroup size of 1-D kernels, a specialization constant (id 0) chosen on the Swift side.
layout(local_size_x_id = 0) in;
