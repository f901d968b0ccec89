use super::fixtures::*;
