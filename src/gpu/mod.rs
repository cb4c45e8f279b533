pub mod doctor;
pub mod probe;
