//! Presenting a run: the text a person reads, the JSON a script reads, SARIF for code hosts,
//! GitHub annotations and GitLab's Code Quality report;
//! and the coordinator report (Markdown, JSON, HTML) over the journal.

pub mod coordinator;
pub mod github;
pub mod gitlab;
pub mod history;
pub mod hosts;
pub mod html;
pub mod json;
pub mod markdown;
pub mod merge;
pub mod progress;
pub mod sarif;
pub mod text;
