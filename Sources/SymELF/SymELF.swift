// SymELF: see ../shared/DESIGN.md.
