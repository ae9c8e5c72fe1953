//! Omni simulator (being written).
