// PhiTokenizer
