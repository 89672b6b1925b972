// PhiGPU
