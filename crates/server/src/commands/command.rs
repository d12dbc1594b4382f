//! The commands this server answers, by name, and what each costs (the cost table of
//! `docs/api.md`).

use crate::envelope::Reply;
use crate::metering::{BACKLINK_ANALYSIS, LINK_PROFILE_ANALYSIS, SUMMARY_ANALYSIS};
use crate::params::Params;
use accounts::Units;

/// Every command, named as Majestic names it (matched without regard to case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    GetIndexItemInfo,
    GetBackLinkData,
    GetRefDomains,
    GetAnchorText,
    GetNewLostBackLinks,
    GetNewLostBackLinkCalendar,
    GetTopics,
    GetTopPages,
    GetRefDomainInfo,
    GetBackLinksHistory,
    GetTopBackLinks,
    GetLinkProfile,
    GetHostedDomains,
    GetSubscriptionInfo,
    GetIndexStats,
    DownloadBackLinks,
    DownloadRefDomainBackLinks,
    GetDownloadsList,
    DeleteDownloads,
    CreateSubAccount,
    SetSubAccountAllowance,
    GetSubAccounts,
    CreateSubAccountKey,
}

impl Command {
    pub const ALL: [Command; 23] = [
        Command::GetIndexItemInfo,
        Command::GetBackLinkData,
        Command::GetRefDomains,
        Command::GetAnchorText,
        Command::GetNewLostBackLinks,
        Command::GetNewLostBackLinkCalendar,
        Command::GetTopics,
        Command::GetTopPages,
        Command::GetRefDomainInfo,
        Command::GetBackLinksHistory,
        Command::GetTopBackLinks,
        Command::GetLinkProfile,
        Command::GetHostedDomains,
        Command::GetSubscriptionInfo,
        Command::GetIndexStats,
        Command::DownloadBackLinks,
        Command::DownloadRefDomainBackLinks,
        Command::GetDownloadsList,
        Command::DeleteDownloads,
        Command::CreateSubAccount,
        Command::SetSubAccountAllowance,
        Command::GetSubAccounts,
        Command::CreateSubAccountKey,
    ];

    /// The name clients send in `cmd`.
    pub fn name(self) -> &'static str {
        match self {
            Command::GetIndexItemInfo => "GetIndexItemInfo",
            Command::GetBackLinkData => "GetBackLinkData",
            Command::GetRefDomains => "GetRefDomains",
            Command::GetAnchorText => "GetAnchorText",
            Command::GetNewLostBackLinks => "GetNewLostBackLinks",
            Command::GetNewLostBackLinkCalendar => "GetNewLostBackLinkCalendar",
            Command::GetTopics => "GetTopics",
            Command::GetTopPages => "GetTopPages",
            Command::GetRefDomainInfo => "GetRefDomainInfo",
            Command::GetBackLinksHistory => "GetBackLinksHistory",
            Command::GetTopBackLinks => "GetTopBackLinks",
            Command::GetLinkProfile => "GetLinkProfile",
            Command::GetHostedDomains => "GetHostedDomains",
            Command::GetSubscriptionInfo => "GetSubscriptionInfo",
            Command::GetIndexStats => "GetIndexStats",
            Command::DownloadBackLinks => "DownloadBackLinks",
            Command::DownloadRefDomainBackLinks => "DownloadRefDomainBackLinks",
            Command::GetDownloadsList => "GetDownloadsList",
            Command::DeleteDownloads => "DeleteDownloads",
            Command::CreateSubAccount => "CreateSubAccount",
            Command::SetSubAccountAllowance => "SetSubAccountAllowance",
            Command::GetSubAccounts => "GetSubAccounts",
            Command::CreateSubAccountKey => "CreateSubAccountKey",
        }
    }

    /// True for commands that scan rows (backlinks, referring domains, anchors, pages):
    /// they are admitted under [`crate::admission`]'s limits.
    pub fn is_heavy(self) -> bool {
        matches!(
            self,
            Command::GetBackLinkData
                | Command::GetRefDomains
                | Command::GetAnchorText
                | Command::GetNewLostBackLinks
                | Command::GetTopics
                | Command::GetTopPages
                | Command::GetBackLinksHistory
                | Command::GetTopBackLinks
                | Command::GetLinkProfile
                | Command::GetHostedDomains
                | Command::GetRefDomainInfo
        )
    }

    /// True for commands that make only bounded point reads (at most 100 items' summary
    /// rows, the caller's own use) and write nothing to the account store: they run on
    /// the connection's own task, without the hand-off to a blocking thread, which costs
    /// two context switches (a quarter of the CPU of a small request, by `perf`).
    pub fn is_quick(self) -> bool {
        matches!(
            self,
            Command::GetIndexItemInfo | Command::GetSubscriptionInfo
        )
    }

    /// True when this request runs on the connection's own task: a quick command, or a
    /// GetBackLinkData page whose read is bounded by its `Count` and `From` alone (at
    /// most 1,000 rows: `backlinks::is_bounded_page`). It still passes admission like any
    /// heavy command; what it saves is the hand-off to the background pool, which under
    /// load cost more than the read of 100 rows.
    pub fn runs_inline(self, params: &Params) -> bool {
        self.is_quick()
            || (self == Command::GetBackLinkData && super::backlinks::is_bounded_page(params))
    }

    /// A command's fixed analysis charge, the least it can cost ([`Command::cost`] adds a
    /// retrieval unit per row; 0 for free commands and for the downloads, which charge
    /// before they queue). A caller who cannot pay it is refused before a heavy command
    /// runs.
    pub fn least_cost(self) -> Units {
        let analysis = match self {
            Command::GetBackLinkData
            | Command::GetNewLostBackLinks
            | Command::GetTopPages
            | Command::GetTopBackLinks
            | Command::GetHostedDomains => BACKLINK_ANALYSIS,
            Command::GetRefDomains
            | Command::GetAnchorText
            | Command::GetTopics
            | Command::GetRefDomainInfo
            | Command::GetNewLostBackLinkCalendar => SUMMARY_ANALYSIS,
            Command::GetLinkProfile => LINK_PROFILE_ANALYSIS,
            Command::GetBackLinksHistory => 10,
            _ => 0,
        };
        Units {
            analysis,
            ..Units::default()
        }
    }

    /// What a command that has run costs: `None` for free commands (and for the
    /// downloads, which charge before they queue). Retrieval units count the rows
    /// of every table of the reply.
    pub fn cost(self, reply: &Reply) -> Option<Units> {
        let rows: u64 = reply
            .billed_rows
            .unwrap_or_else(|| reply.tables.iter().map(|t| t.len() as u64).sum());
        match self {
            // 10 analysis units per item (one `Results` row each), as Majestic charges.
            Command::GetBackLinksHistory => Some(Units {
                analysis: 10 * reply.tables.first().map_or(0, |t| t.len() as u64),
                ..Units::default()
            }),
            Command::GetIndexItemInfo => Some(Units {
                index_item_info: rows,
                ..Units::default()
            }),
            // The fixed analysis charge, and one retrieval unit per row.
            _ => {
                let analysis = self.least_cost().analysis;
                (analysis > 0).then_some(Units {
                    analysis,
                    retrieval: rows,
                    ..Units::default()
                })
            }
        }
    }
}

impl Command {
    /// The command a request names in `cmd`, or the refusal Majestic gives an unknown one.
    pub fn named(cmd: &str) -> Result<Command, crate::error::ApiError> {
        cmd.parse().map_err(|()| {
            crate::error::ApiError::new(
                "FailedRequestViaAPI",
                format!("The command '{cmd}' is not in the list of supported commands."),
            )
        })
    }
}

impl std::str::FromStr for Command {
    type Err = ();

    fn from_str(s: &str) -> Result<Command, ()> {
        Command::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
            .ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_without_regard_to_case() {
        for c in Command::ALL {
            assert_eq!(c.name().parse::<Command>(), Ok(c));
            assert_eq!(c.name().to_ascii_lowercase().parse::<Command>(), Ok(c));
        }
        assert!("GetEverything".parse::<Command>().is_err());
    }
}
