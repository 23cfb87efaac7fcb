// Stand-in for the parts of SwiftUI our views use, from developer.apple.com/documentation/swiftui.
// Minimal but shaped like the real API where it matters to type-checking: `View` is a
// main-actor protocol with an associated `Body` built by the `@resultBuilder ViewBuilder`
// (blocks, `if`, `if let`, `switch`, local declarations), each modifier returns `some View`
// and takes what the documented signature takes (ShapeStyle / Color / Font members used as
// implicit members, `@Sendable` async actions that inherit the actor context as the SDK's
// declare them with `@_inheritActorContext`). Generic parameters the views never spell out
// (Section's header/footer, Label's icon) are collapsed. Bodies trap.
@_exported import Observation
@_exported import Foundation   // as the framework's umbrella header imports Foundation
import UIKit

// MARK: View, result builders

/// developer.apple.com/documentation/swiftui/view
@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor var body: Body { get }
}

extension Never: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}

/// A view the stand-in builds for every container and modifier.
public struct _StubView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

public struct EmptyView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init() {}
}

public struct TupleView<T>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init(_ value: T) {}
}

public struct _ConditionalContent<TrueContent: View, FalseContent: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

/// developer.apple.com/documentation/swiftui/viewbuilder
@resultBuilder public struct ViewBuilder {
    public static func buildExpression<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock() -> EmptyView { EmptyView() }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<(repeat each Content)> {
        TupleView((repeat each content))
    }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
    public static func buildEither<T: View, F: View>(first: T) -> _ConditionalContent<T, F> { _ConditionalContent() }
    public static func buildEither<T: View, F: View>(second: F) -> _ConditionalContent<T, F> { _ConditionalContent() }
    public static func buildLimitedAvailability<Content: View>(_ content: Content) -> AnyView { AnyView(content) }
}

extension Optional: View where Wrapped: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}

public struct AnyView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init<V: View>(_ view: V) {}
}

// MARK: App, Scene

/// developer.apple.com/documentation/swiftui/app
@MainActor @preconcurrency public protocol App {
    associatedtype Body: Scene
    @SceneBuilder @MainActor var body: Body { get }
    @MainActor init()
}
extension App {
    @MainActor public static func main() { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/scene
@MainActor @preconcurrency public protocol Scene {
    associatedtype Body: Scene
    @SceneBuilder @MainActor var body: Body { get }
}
extension Never: Scene {}

public struct _StubScene: Scene {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

/// developer.apple.com/documentation/swiftui/scenebuilder
@resultBuilder public struct SceneBuilder {
    public static func buildBlock<Content: Scene>(_ content: Content) -> Content { content }
}

/// developer.apple.com/documentation/swiftui/windowgroup
public struct WindowGroup<Content: View>: Scene {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/scenephase
public enum ScenePhase: Comparable, Hashable, Sendable {
    case background, inactive, active
}

extension Scene {
    /// `func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some Scene where V : Equatable`
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (_ oldValue: V, _ newValue: V) -> Void) -> some Scene {
        _StubScene()
    }
}

// MARK: Data flow

/// developer.apple.com/documentation/swiftui/dynamicproperty
public protocol DynamicProperty {}

/// developer.apple.com/documentation/swiftui/state
@propertyWrapper public struct State<Value>: DynamicProperty {
    public init(wrappedValue value: Value) {}
    public init(initialValue value: Value) {}
    public var wrappedValue: Value { get { fatalError("stand-in") } nonmutating set {} }
    public var projectedValue: Binding<Value> { fatalError("stand-in") }
}
extension State where Value: ExpressibleByNilLiteral {
    public init() {}
}

/// developer.apple.com/documentation/swiftui/binding
@propertyWrapper @dynamicMemberLookup public struct Binding<Value>: DynamicProperty {
    /// developer.apple.com/documentation/swiftui/binding/init(get:set:)-7ufcp —
    /// `@preconcurrency init(get: @escaping @isolated(any) @Sendable () -> Value,
    /// set: @escaping @isolated(any) @Sendable (Value) -> Void)`
    @preconcurrency public init(get: @escaping @isolated(any) @Sendable () -> Value,
                                set: @escaping @isolated(any) @Sendable (Value) -> Void) {}
    public init(projectedValue: Binding<Value>) {}
    /// `static func constant(_ value: Value) -> Binding<Value>`
    public static func constant(_ value: Value) -> Binding<Value> { fatalError("stand-in") }
    public var wrappedValue: Value { get { fatalError("stand-in") } nonmutating set {} }
    public var projectedValue: Binding<Value> { self }
    public subscript<Subject>(dynamicMember keyPath: WritableKeyPath<Value, Subject>) -> Binding<Subject> { fatalError("stand-in") }
}

/// "A binding conforms to Sendable only if its wrapped value type also conforms to Sendable."
extension Binding: @unchecked Sendable where Value: Sendable {}

/// developer.apple.com/documentation/swiftui/bindable
@propertyWrapper @dynamicMemberLookup public struct Bindable<Value> {
    public init(wrappedValue: Value) where Value: AnyObject & Observable {}
    public init(_ wrappedValue: Value) where Value: AnyObject & Observable {}
    public var wrappedValue: Value { fatalError("stand-in") }
    public var projectedValue: Bindable<Value> { self }
    public subscript<Subject>(dynamicMember keyPath: ReferenceWritableKeyPath<Value, Subject>) -> Binding<Subject> where Value: AnyObject {
        fatalError("stand-in")
    }
}

/// developer.apple.com/documentation/swiftui/environmentvalues
public struct EnvironmentValues {
    /// developer.apple.com/documentation/swiftui/environmentvalues/scenephase
    public var scenePhase: ScenePhase { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/environment
@propertyWrapper public struct Environment<Value>: DynamicProperty {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/uiapplicationdelegateadaptor
@MainActor @propertyWrapper public struct UIApplicationDelegateAdaptor<DelegateType: NSObject & UIApplicationDelegate>: DynamicProperty {
    public init(_ delegateType: DelegateType.Type = DelegateType.self) {}
    public var wrappedValue: DelegateType { fatalError("stand-in") }
}

// MARK: Colours, styles, fonts, shapes

/// developer.apple.com/documentation/swiftui/shapestyle
public protocol ShapeStyle: Sendable {}

/// developer.apple.com/documentation/swiftui/color — a Sendable value whose members are
/// nonisolated; its `View` conformance is a separate extension, as in the SDK.
public struct Color: ShapeStyle, Hashable, Sendable {
    public init(_ color: UIColor) {}
    public static let black = Color(UIColor())
    public static let white = Color(UIColor())
    public static let gray = Color(UIColor())
    public static let red = Color(UIColor())
    public static let green = Color(UIColor())
    public static let orange = Color(UIColor())
    public static let primary = Color(UIColor())
    public static let secondary = Color(UIColor())
    public static let accentColor = Color(UIColor())
}
extension Color: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}
extension ShapeStyle where Self == Color {
    public static var black: Color { Color.black }
    public static var white: Color { Color.white }
    public static var gray: Color { Color.gray }
    public static var red: Color { Color.red }
    public static var green: Color { Color.green }
    public static var orange: Color { Color.orange }
    public static var accentColor: Color { Color.accentColor }
}

/// developer.apple.com/documentation/swiftui/hierarchicalshapestyle
public struct HierarchicalShapeStyle: ShapeStyle {
    public static let primary = HierarchicalShapeStyle()
    public static let secondary = HierarchicalShapeStyle()
}
extension ShapeStyle where Self == HierarchicalShapeStyle {
    public static var primary: HierarchicalShapeStyle { .primary }
    public static var secondary: HierarchicalShapeStyle { .secondary }
}

/// developer.apple.com/documentation/swiftui/material
public struct Material: ShapeStyle {
    public static let thinMaterial = Material()
    public static let regularMaterial = Material()
}
extension ShapeStyle where Self == Material {
    public static var thinMaterial: Material { .thinMaterial }
    public static var regularMaterial: Material { .regularMaterial }
}

/// developer.apple.com/documentation/swiftui/font
public struct Font: Hashable, Sendable {
    public static let largeTitle = Font()
    public static let title = Font()
    public static let title2 = Font()
    public static let headline = Font()
    public static let subheadline = Font()
    public static let body = Font()
    public static let callout = Font()
    public static let footnote = Font()
    public static let caption = Font()
    /// `func bold() -> Font`
    public func bold() -> Font { self }
}

/// developer.apple.com/documentation/swiftui/shape
public protocol Shape: View, Sendable {}

/// developer.apple.com/documentation/swiftui/roundedrectangle
public struct RoundedRectangle: Shape {
    public typealias Body = Never
    public nonisolated var body: Never { fatalError("stand-in") }
    public nonisolated init(cornerRadius: CGFloat) {}
}

/// developer.apple.com/documentation/swiftui/capsule
public struct Capsule: Shape {
    public typealias Body = Never
    public nonisolated var body: Never { fatalError("stand-in") }
    public nonisolated init() {}
}

// MARK: Layout values

public struct Edge {
    /// developer.apple.com/documentation/swiftui/edge/set
    public struct Set: OptionSet, Sendable {
        public var rawValue: Int8
        public init(rawValue: Int8) { self.rawValue = rawValue }
        public static let top = Set(rawValue: 1), leading = Set(rawValue: 2), bottom = Set(rawValue: 4), trailing = Set(rawValue: 8)
        public static let all: Set = [.top, .leading, .bottom, .trailing]
        public static let horizontal: Set = [.leading, .trailing]
        public static let vertical: Set = [.top, .bottom]
    }
}

/// developer.apple.com/documentation/swiftui/axis/set
public enum Axis {
    public struct Set: OptionSet, Sendable {
        public var rawValue: Int8
        public init(rawValue: Int8) { self.rawValue = rawValue }
        public static let horizontal = Set(rawValue: 1), vertical = Set(rawValue: 2)
    }
}

public struct HorizontalAlignment: Sendable {
    public static let leading = HorizontalAlignment(), center = HorizontalAlignment(), trailing = HorizontalAlignment()
}
public struct VerticalAlignment: Sendable {
    public static let top = VerticalAlignment(), center = VerticalAlignment(), bottom = VerticalAlignment()
}
public struct Alignment: Sendable {
    public static let top = Alignment(), center = Alignment(), bottom = Alignment(), leading = Alignment(), trailing = Alignment()
}
