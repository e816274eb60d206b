//! The provider floor: the Twilio Messages client the window calls (`client`, its settings in
//! `config`, every create outcome classified in `classify`), the Calls API the ladder rings
//! people through (`call`), whose fault a refusal is (`blame`),
//! request signatures, and the message model shared with the simulator. Uses only the shared
//! modules; storage and the provider never use each other.

pub mod blame;
pub mod call;
pub mod classify;
pub mod client;
pub mod config;
pub mod list;
pub mod message;
pub mod signature;

pub use client::{
    Auth, CreateMessage, ListFilter, MessageSearch, PageLimits, Secret, SendOutcome, Sender,
    TwilioClient, TwilioConfig, TwilioError,
};
pub use message::{ApiError, Message, MessagePage};
