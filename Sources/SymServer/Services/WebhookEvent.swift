import Foundation
import SymHTTP

/// What a notification says, as it was when the group changed: written into the outbox in the
/// transaction of the change, so every attempt of a delivery sends the same body.
struct WebhookEvent: Sendable, Codable, Equatable {
    var event: Webhook.Event
    var appID: String
    var group: CrashStore.GroupSummary
    /// The crash that caused the event.
    var crashID: String
    /// The crash's version (the newer version of a regression).
    var version: String
    /// When the change was committed (RFC 3339).
    var created: String
    /// A spike's crashes in the last hour.
    var lastHour: Int?
    /// A spike's hourly average over the 7 days before the last hour.
    var hourlyAverage: Double?

    enum CodingKeys: String, CodingKey {
        case event, group, version, created
        case appID = "app_id", crashID = "crash_id", lastHour = "last_hour", hourlyAverage = "hourly_average"
    }
}

/// Renders the body of a delivery (docs/webhooks.md, "Payload").
enum WebhookPayload {
    /// The body of `event` as delivery `deliveryID` in `format`; links start at `publicURL`.
    static func body(_ event: WebhookEvent, deliveryID: String, format: Webhook.Format, publicURL: String?) -> [UInt8] {
        let link = publicURL.map { consoleLink(base: $0, appID: event.appID, crashID: event.crashID) }
        switch format {
        case .json: return json(event, deliveryID: deliveryID, link: link)
        case .slack: return slack(event, link: link)
        }
    }

    /// The console page of a crash.
    static func consoleLink(base: String, appID: String, crashID: String) -> String {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        return "\(trimmed)/apps/\(PercentEncoding.encode(appID, as: .pathSegment))/crashes/\(PercentEncoding.encode(crashID, as: .pathSegment))"
    }

    private struct JSONBody: Encodable {
        var event: WebhookEvent
        var deliveryID: String
        var link: String?

        enum CodingKeys: String, CodingKey {
            case event, delivery, app, group, crash, version, created, spike
        }
        enum GroupKeys: String, CodingKey {
            case id, title, signature, count, state, versions, hosts
            case firstSeen = "first_seen", lastSeen = "last_seen", resolvedIn = "resolved_in", reopenedIn = "reopened_in"
        }
        enum CrashKeys: String, CodingKey { case id, url }
        enum SpikeKeys: String, CodingKey { case lastHour = "last_hour", hourlyAverage = "hourly_average" }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event.event, forKey: .event)
            try container.encode(deliveryID, forKey: .delivery)
            try container.encode(event.appID, forKey: .app)
            try container.encode(event.version, forKey: .version)
            try container.encode(event.created, forKey: .created)
            var group = container.nestedContainer(keyedBy: GroupKeys.self, forKey: .group)
            try group.encode(event.group.id, forKey: .id)
            try group.encode(event.group.title, forKey: .title)
            try group.encode(event.group.signature, forKey: .signature)
            try group.encode(event.group.count, forKey: .count)
            try group.encode(event.group.state, forKey: .state)
            try group.encode(event.group.versions, forKey: .versions)
            try group.encode(event.group.hosts, forKey: .hosts)
            try group.encode(event.group.firstSeen, forKey: .firstSeen)
            try group.encode(event.group.lastSeen, forKey: .lastSeen)
            try group.encode(event.group.resolvedIn, forKey: .resolvedIn)
            try group.encode(event.group.reopenedIn, forKey: .reopenedIn)
            var crash = container.nestedContainer(keyedBy: CrashKeys.self, forKey: .crash)
            try crash.encode(event.crashID, forKey: .id)
            try crash.encode(link, forKey: .url)
            if event.event == .spike {
                var spike = container.nestedContainer(keyedBy: SpikeKeys.self, forKey: .spike)
                try spike.encode(event.lastHour ?? 0, forKey: .lastHour)
                try spike.encode(((event.hourlyAverage ?? 0) * 100).rounded() / 100, forKey: .hourlyAverage)
            }
        }
    }

    private static func json(_ event: WebhookEvent, deliveryID: String, link: String?) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(JSONBody(event: event, deliveryID: deliveryID, link: link))) ?? Data())
    }

    private static func slack(_ event: WebhookEvent, link: String?) -> [UInt8] {
        let group = event.group
        let headline: String
        switch event.event {
        case .groupNew: headline = "New crash in \(event.appID) \(event.version)"
        case .regression: headline = "Regression in \(event.appID) \(event.version) (resolved in \(group.resolvedIn ?? "an older version"))"
        case .spike:
            let average = String(format: "%.1f", event.hourlyAverage ?? 0)
            headline = "Crash spike in \(event.appID): \(event.lastHour ?? 0) in the last hour (hourly average \(average))"
        }
        // Slack's mrkdwn: &, < and > are the only characters to escape.
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        var text = "*\(escaped(headline))*\n\(escaped(group.title))\n"
            + "\(group.count) crash\(group.count == 1 ? "" : "es"), versions \(escaped(group.versions.joined(separator: ", "))), "
            + "first seen \(group.firstSeen)"
        if let link { text += "\n<\(link)|Open crash \(event.crashID)>" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(["text": text])) ?? Data())
    }
}
