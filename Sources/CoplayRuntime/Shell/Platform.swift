// The shell speaks Linux: ip_mreqn multicast membership, SO_TIMESTAMPNS kernel receive stamps,
// SO_RXQ_OVFL drop counts and Glibc. CoplayCore (the protocol) is pure Swift and builds anywhere;
// the runtime says so plainly instead of failing somewhere inside a socket call.
#if !os(Linux)
    #error("CoplayRuntime (the coplay agent) supports Linux only; CoplayCore builds on any platform")
#endif
