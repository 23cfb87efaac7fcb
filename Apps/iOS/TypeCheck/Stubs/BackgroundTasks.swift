// Stand-in for BackgroundTasks, from developer.apple.com/documentation/backgroundtasks
// (BGTaskScheduler, BGTask, BGAppRefreshTaskRequest). Bodies trap.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/backgroundtasks/bgtask
open class BGTask: NSObject {
    open var identifier: String { fatalError("stand-in") }
    /// `var expirationHandler: (() -> Void)?`
    open var expirationHandler: (() -> Void)?
    /// `func setTaskCompleted(success: Bool)`
    open func setTaskCompleted(success: Bool) { fatalError("stand-in") }
}

open class BGAppRefreshTask: BGTask {}

/// developer.apple.com/documentation/backgroundtasks/bgtaskrequest
open class BGTaskRequest: NSObject {
    open var identifier: String { fatalError("stand-in") }
    /// `var earliestBeginDate: Date?`
    open var earliestBeginDate: Date?
}

/// developer.apple.com/documentation/backgroundtasks/bgapprefreshtaskrequest
open class BGAppRefreshTaskRequest: BGTaskRequest {
    /// `init(identifier: String)`
    public init(identifier: String) {}
}

/// developer.apple.com/documentation/backgroundtasks/bgtaskscheduler
open class BGTaskScheduler: NSObject {
    /// `class var shared: BGTaskScheduler { get }`
    open class var shared: BGTaskScheduler { fatalError("stand-in") }
    /// `func register(forTaskWithIdentifier identifier: String, using queue: dispatch_queue_t?,
    /// launchHandler: @escaping (BGTask) -> Void) -> Bool`
    open func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
                       launchHandler: @escaping (BGTask) -> Void) -> Bool { fatalError("stand-in") }
    /// `func submit(_ taskRequest: BGTaskRequest) throws`
    open func submit(_ taskRequest: BGTaskRequest) throws { fatalError("stand-in") }
}
