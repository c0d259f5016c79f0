// SymDWARF: see ../shared/DESIGN.md.
