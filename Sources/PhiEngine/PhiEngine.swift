// PhiEngine
