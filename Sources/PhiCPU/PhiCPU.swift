// PhiCPU
