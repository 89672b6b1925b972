print("phi-gpu")
