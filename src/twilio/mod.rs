//! Twilio at the edge: the Messages client, whose fault a refusal is, signatures, and the
//! message model shared with the simulator.

pub mod blame;
pub mod client;
pub mod message;
pub mod signature;

pub use client::{
    Auth, CreateMessage, ListFilter, MessageSearch, PageLimits, Secret, SendOutcome, Sender,
    TwilioClient, TwilioConfig, TwilioError,
};
pub use message::{ApiError, Message, MessagePage};
