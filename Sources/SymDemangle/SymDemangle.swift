// SymDemangle: see ../shared/DESIGN.md.
