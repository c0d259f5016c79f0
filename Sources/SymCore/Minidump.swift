public enum MinidumpPlaceholder {}
