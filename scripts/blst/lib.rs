// Empty: this crate exists only so that cargo fetches blst.
