enum Stub {}
