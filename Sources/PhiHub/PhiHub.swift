// PhiHub
