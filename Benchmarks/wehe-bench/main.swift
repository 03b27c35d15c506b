print("wehe-bench")
